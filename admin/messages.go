package admin

func (a *Admin) messageRoutes() []Route { return nil }
